"""Deterministic travel tools for `graphs/trip_planner.csv`: they read `graphs/data/trips.json`.

No network: flights and hotels come from the bundled file, so the workflow gives the same plan every
time. A tool that cannot answer raises `ValueError` with a reason (which cities it knows, say).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["build_itinerary", "search_flights", "search_hotels"]

_DATA = Path(__file__).resolve().parent.parent / "data" / "trips.json"


@cache
def _data() -> dict[str, list[dict[str, Any]]]:
    loaded: dict[str, list[dict[str, Any]]] = json.loads(_DATA.read_text(encoding="utf-8"))
    return loaded


def _same(a: str, b: str) -> bool:
    return a.strip().casefold() == b.strip().casefold()


def search_flights(origin: str, destination: str, max_price_usd: float | None = None) -> dict[str, Any]:
    """Find flights from `origin` to `destination` (city names), cheapest first.

    Args:
        origin: The departure city, e.g. "New York".
        destination: The arrival city, e.g. "Paris".
        max_price_usd: Leave out flights dearer than this.
    """
    flights = [
        f
        for f in _data()["flights"]
        if _same(f["origin"], origin)
        and _same(f["destination"], destination)
        and (max_price_usd is None or f["price_usd"] <= max_price_usd)
    ]
    if not flights:
        routes = sorted({f"{f['origin']} -> {f['destination']}" for f in _data()["flights"]})
        raise ValueError(f"no flight from {origin} to {destination}; known routes: {', '.join(routes)}")
    flights.sort(key=lambda f: f["price_usd"])
    return {"origin": origin, "destination": destination, "flights": flights, "cheapest": flights[0]}


def search_hotels(city: str, nights: int = 1, max_price_per_night_usd: float | None = None) -> dict[str, Any]:
    """Find hotels in `city`, best rated first, with the cost of `nights` nights.

    Args:
        city: The city, e.g. "Paris".
        nights: How many nights to stay.
        max_price_per_night_usd: Leave out hotels dearer than this per night.
    """
    if nights < 1:
        raise ValueError(f"nights must be at least 1, got {nights}")
    hotels = [
        {**h, "total_usd": h["price_per_night_usd"] * nights}
        for h in _data()["hotels"]
        if _same(h["city"], city)
        and (max_price_per_night_usd is None or h["price_per_night_usd"] <= max_price_per_night_usd)
    ]
    if not hotels:
        cities = sorted({h["city"] for h in _data()["hotels"]})
        raise ValueError(f"no hotel in {city} within the limits; hotels are known in: {', '.join(cities)}")
    hotels.sort(key=lambda h: (-h["rating"], h["price_per_night_usd"]))
    return {"city": city, "nights": nights, "hotels": hotels, "best": hotels[0]}


def build_itinerary(flight: dict[str, Any], hotel: dict[str, Any], nights: int) -> dict[str, Any]:
    """Combine a flight and a hotel into an itinerary with its total price.

    Args:
        flight: One flight, as `search_flights` returns them.
        hotel: One hotel, as `search_hotels` returns them.
        nights: How many nights to stay.
    """
    hotel_cost = hotel["price_per_night_usd"] * nights
    total = flight["price_usd"] + hotel_cost
    summary = (
        f"Fly {flight['airline']} {flight['flight']} from {flight['origin']} to {flight['destination']} "
        f"at {flight['departure']} (${flight['price_usd']}), then stay {nights} night"
        f"{'s' if nights != 1 else ''} at {hotel['name']} (${hotel_cost}). Total: ${total}."
    )
    return {"flight": flight, "hotel": hotel, "nights": nights, "total_usd": total, "summary": summary}
