"""Saving a store across a call (placeholder)."""


def save_store(b, cur, v, stacks):
    raise NotImplementedError("cps: a store live across a call")


def restore_store(b, cur, v, stacks):
    raise NotImplementedError("cps: a store live across a call")
