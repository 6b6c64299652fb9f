"""Database access: the embedded server, connections, pools and migrations."""
