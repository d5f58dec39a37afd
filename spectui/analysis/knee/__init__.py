"""The batch knee: where speculation stops paying as a server batches more sequences: a server's steps replayed
on the measured costs (``server_steps``), the knee in words (``knee_text``) and as an engine's config
(``engine_configs``: probe --emit)."""
