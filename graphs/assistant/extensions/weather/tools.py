"""Weather domain tools (a fixed table: no network)."""

_FORECASTS = {"paris": "sunny, 21°C", "london": "light rain, 15°C", "madrid": "clear, 28°C"}


def weather_forecast(city: str) -> str:
    """Get the weather forecast for a city: will it rain, how warm or sunny is it."""
    return _FORECASTS.get(city.strip().lower(), f"no forecast for {city}")
