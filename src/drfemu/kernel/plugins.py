"""Plug-ins by name, loaded on first use: the protocols and the generated workloads.

A `Registry` knows its entries without importing them: the built-in ones as `"module:attribute"`
text (the one registration a new built-in protocol or workload needs), then those that installed
packages declare in an entry-point group, in name order. An entry is imported the first time it
is asked for (`registry[name]`), or when every entry is (`values()`, `items()`: what building
the command line's options needs). `register` adds a spec made in this process. A spec whose
parameter is declared differently by another entry of its registry is refused: a run parameter
has one declaration, whichever plug-ins declare it.

A plug-in that cannot be loaded — its import fails, it names something that is not a spec of
this registry, or its name differs from its entry's — is left out with one `PluginWarning`
naming it and why (`errors` keeps the lines); the other entries work on. A built-in entry that
cannot be loaded is a bug of drfemu and raises.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import ItemsView, Iterator, Mapping, ValuesView
from importlib.metadata import EntryPoint, entry_points
from typing import Generic, Protocol, TypeVar

from drfemu.kernel.errors import InputError, PluginWarning
from drfemu.kernel.params import Param

__all__ = ["Named", "Registry", "UnknownName"]


class Named(Protocol):
    """A spec: a name, and the run parameters it declares."""

    @property
    def name(self) -> str: ...

    @property
    def params(self) -> tuple[Param, ...]: ...


S = TypeVar("S", bound=Named)


class UnknownName(InputError):
    """No entry of a registry has that name."""


class Registry(Mapping[str, S], Generic[S]):
    """The entries of one kind of plug-in by name (a read-only mapping that loads on access)."""

    def __init__(self, kind: str, spec_type: type[S], group: str, built_in: Mapping[str, str]) -> None:
        """`kind` names an entry in messages ("protocol"); `group` is the entry-point group."""
        self.kind = kind
        self.spec_type = spec_type
        self.group = group
        self._built_in = dict(built_in)
        self._loaded: dict[str, S] = {}
        self._pending: dict[str, EntryPoint] | None = None  # the installed packages' entries, once read
        self.errors: list[str] = []
        """One line per plug-in that was left out, in the order they were tried."""
        self._broken: dict[str, str] = {}  # a left-out plug-in's name -> why, for whoever asks for it later

    # -- listing ----------------------------------------------------------------------------
    def _plugins(self) -> dict[str, EntryPoint]:
        if self._pending is None:
            self._pending = {e.name: e for e in sorted(entry_points(group=self.group), key=lambda e: e.name)
                             if e.name not in self._built_in}
        return self._pending

    def __iter__(self) -> Iterator[str]:
        names = [*self._built_in, *self._plugins(), *self._loaded]
        return iter(dict.fromkeys(names))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, name: object) -> bool:
        return name in self._loaded or name in self._built_in or name in self._plugins()

    # -- loading ----------------------------------------------------------------------------
    def __getitem__(self, name: str) -> S:
        spec = self._loaded.get(name)
        if spec is not None:
            return spec
        if name in self._built_in:
            return self._add(self._import(self._built_in[name]), name)
        entry = self._plugins().get(name)
        if entry is None:
            broken = self.broken(name)
            if broken is not None:
                raise UnknownName(f"{self.kind} {name!r} could not be loaded: {broken}")
            raise UnknownName(f"unknown {self.kind} {name!r}; choose one of: {', '.join(self)}")
        try:
            return self._add(entry.load(), name)
        except Exception as error:  # noqa: BLE001 - a broken plug-in must not take the others down
            del self._plugins()[name]
            where = f"{self.kind} plug-in {name!r} ({entry.value}"
            where += f", from {entry.dist.name})" if entry.dist is not None else ")"
            message = f"{where} left out: {type(error).__name__}: {' '.join(str(error).split())}"  # one line
            self.errors.append(message)
            self._broken[name] = f"{type(error).__name__}: {' '.join(str(error).split())}"
            warnings.warn(message, PluginWarning, stacklevel=3)
            raise UnknownName(f"{self.kind} {name!r} could not be loaded: {self._broken[name]}") from None

    def broken(self, name: str) -> str | None:
        """Why the plug-in entry `name` was left out (its error, one line), or None: it was not."""
        return self._broken.get(name)

    def load_all(self) -> None:
        """Import every entry now (a broken plug-in is left out, with its warning)."""
        for name in list(self):
            try:
                self[name]
            except UnknownName:
                pass

    def values(self) -> ValuesView[S]:
        self.load_all()
        return super().values()

    def items(self) -> ItemsView[str, S]:
        self.load_all()
        return super().items()

    @staticmethod
    def _import(where: str) -> object:
        module, _, attribute = where.partition(":")
        return getattr(importlib.import_module(module), attribute)

    def _add(self, spec: object, name: str) -> S:
        if not isinstance(spec, self.spec_type):
            raise TypeError(f"it names a {type(spec).__name__}, not a drfemu {self.spec_type.__name__}")
        if spec.name != name:
            raise ValueError(f"its entry is named {name!r} but its {self.kind} {spec.name!r}")
        self._no_clash(spec)
        self._loaded[name] = spec
        return spec

    def _no_clash(self, spec: S) -> None:
        """A parameter `spec` declares must not be declared differently by another entry (a
        `ValueError` naming both); the built-in entries are loaded first, so a plug-in never
        displaces one of theirs."""
        if spec.name not in self._built_in:
            for name in self._built_in:
                self[name]
        for param in spec.params:
            for other in self._loaded.values():  # those loaded so far, without loading more
                for theirs in other.params:
                    if theirs.name == param.name and theirs != param:
                        raise ValueError(f"{self.kind} {spec.name!r}: parameter {param.name!r} is declared "
                                         f"differently by {other.name!r}")

    # -- this process ---------------------------------------------------------------------------
    def register(self, spec: S) -> S:
        """Add a spec made in this process; its name must be new."""
        if spec.name in self:
            raise ValueError(f"{self.kind} {spec.name!r} is registered already")
        return self._add(spec, spec.name)

    def unregister(self, name: str) -> None:
        """Remove a spec registered in this process (tests that register one of their own)."""
        del self._loaded[name]
