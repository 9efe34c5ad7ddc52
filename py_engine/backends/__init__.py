"""Backends: each turns kernel calls into work on one kind of device."""
