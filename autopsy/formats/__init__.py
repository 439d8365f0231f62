"""Byte-level decoders, no judgement: TFRecord/Event frames, the restricted unpickler, headers.

This package imports no other part of autopsy.
"""
