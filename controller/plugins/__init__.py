"""tide package."""
