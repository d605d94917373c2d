"""Maths domain tools."""


def add_numbers(a: float, b: float) -> float:
    """Add two numbers: what is a plus b, the sum or total of a and b."""
    return a + b


def multiply_numbers(a: float, b: float) -> float:
    """Multiply two numbers: what is a times b, the product of a and b."""
    return a * b
