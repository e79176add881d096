"""debug."""
