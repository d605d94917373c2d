"""Maths domain tools."""


def add_numbers(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


def multiply_numbers(a: float, b: float) -> float:
    """Multiply two numbers."""
    return a * b
