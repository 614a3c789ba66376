"""memsim: a research harness for long-term memory policies of AI assistants."""
__version__ = "0.1.0"
