"""Sessions in SQLite through SQLAlchemy: models, schema version, repository."""
