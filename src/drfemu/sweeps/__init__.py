"""sweeps"""
