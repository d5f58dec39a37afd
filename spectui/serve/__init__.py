"""``spectui serve``'s web page: textual-serve, locked to its own page (no Textual here).

textual-serve runs one process per browser tab and draws its screen in the page (xterm.js). spectui uses
its extension points, not a fork: ``server.PageServer`` subclasses its ``Server`` and ``session.Session`` its
``AppService``. What they add:

- ``guard``: the rules, as plain functions: a per-run token (in the URL serve prints, as Jupyter does; the
  page and the websocket refuse a request without it), the websocket's Origin checked against the page's
  own, the terminal size a browser may ask for capped (``MAX_COLUMNS`` x ``MAX_ROWS``; the query string
  and every resize message), and the number of sessions at once (``--max-sessions``).
- ``session``: each tab's process started without a shell, in its own process group, ended with its
  websocket (asked to quit, then SIGTERM, then SIGKILL, each within a deadline) and with serve (the kernel
  sends it SIGTERM if serve dies first); a process that ends with an error, or never draws a screen, has its
  output shown in the page (escaped), not a blank card.
- ``server``: the routes (the page, the websocket, the static files without a directory listing), the
  session cap, a header deadline for idle connections, and the event loop: SIGINT / SIGTERM / SIGHUP end
  every session and then serve, with 128 + N.
"""
