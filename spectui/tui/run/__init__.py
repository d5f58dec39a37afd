"""The run face (live engine run or replayed trace): app, screens and one widget per file."""
