"""publish: see the package README in docs/layout.md."""
