"""The command line: argument parsing and dispatch only, one module per verb (``main.VERBS``),
the arguments several verbs share in ``args``."""
