"""Python actors of the bundled graphs (`graphs/`), referenced from their YAML as `orchestrator.bundled.<module>:<function>`."""
