"""The demo workspace's data: ``seed.sql`` and the builder that turns it into SQLite."""
