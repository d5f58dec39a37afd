"""The attach face (a watched serving engine): app, screen and its panels."""
