"""llama.cpp itself: the bindings loaded once (``llama_lib``) and their extensions (``llama_ext``), a loaded
model and its context (``models``), the checks before a file loads (``preload``), devices and GPU layers
(``devices``), in-graph sampling chains (``graph_sampling``), OpenMP's wait policy (``omp``) and the decode
abort (``abort``). The bottom of the engine: nothing here imports another part of it."""
