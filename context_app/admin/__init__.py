"""Admin screens, one module per concept (Django autodiscovers this package)."""
