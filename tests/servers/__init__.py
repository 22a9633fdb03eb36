"""Real servers that the test suite installs and starts itself (see each module's docstring)."""
