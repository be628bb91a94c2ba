"""DDL text as data: parse statements into schema operations (statements), map source types (types)."""
