"""Built-in catalogs and the Python functions behind them (conformance fixtures, demo tenant)."""
