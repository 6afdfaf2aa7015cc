"""The allocation protocols: what a protocol is (`spec.ProtocolSpec`), the registry of them, the
central and distributed rule interfaces, their shared parts, and the rules. Protocol logic is
pure: it reads a view and answers with decisions, never touching the runtime."""
