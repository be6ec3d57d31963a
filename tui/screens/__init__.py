"""Modal screens: permission, archive viewer, archive list, compact focus prompt."""
