"""Launchers: how an engine is started, watched and stopped (a host process, a container, a
Compose service, a native service, the host-side shim, a server already running)."""
