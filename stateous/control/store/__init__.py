"""The store: tables, queries and migrations. All SQL lives here."""
