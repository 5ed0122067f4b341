# The embedded default dataset is built from Debian's fortunes package at build
# time (see docs/data.md); the rule is added by tools/wiola-data once it exists.
