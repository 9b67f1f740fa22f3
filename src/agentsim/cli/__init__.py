"""The ``agentsim`` command line: one module per command group over ``common`` (the app, errors,
formats); ``main`` holds the entry point and registers the groups.
"""
