"""cli: see the package README in docs/layout.md."""
