"""Running and supervising downstream servers: one host per server kept in step with the registry, with its
tools and their pins."""
