"""Program transformations. Each pass is a pure function on `Prog`."""
