"""Operator tools: look up every attempt of a message, replay a dead one."""
