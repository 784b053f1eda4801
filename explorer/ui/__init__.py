"""All Qt code lives here: thin, passive views over `explorer.model` objects."""
