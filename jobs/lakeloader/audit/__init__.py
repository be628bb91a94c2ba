"""Audit: reconciliation, replay and the silver state rebuilt from bronze that both compare or copy."""
