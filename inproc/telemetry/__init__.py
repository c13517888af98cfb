"""GPU and host telemetry, sampled per entry, turned into figures, and judged.

Usage by the runner::

    telemetry = open_telemetry(gpu_indices=None, hz=10.0)   # sampler.py: spawns the GPU sampler process
                                                            # (gpu_process.py); never raises for missing NVML
    telemetry.start_cell()
    telemetry.mark("open", t_open_s)                        # a decode window's edges: energy read there
    ...  # measure; the window is [t_open_s, t_close_s] in time.perf_counter() seconds
    telemetry.mark("close", t_close_s)
    trace = telemetry.stop_cell()                           # raw samples and edge reads, stored as is
    figures = cell_figures(trace, t_open_s, t_close_s, output_tokens)   # figures.py
    passed, reason = throttle_check(figures)                            # judge.py
    telemetry.close()

Only ``gpu_reader.py`` imports ``pynvml`` (in the sampler process) and only ``host_reader.py`` /
``metadata.py`` import ``psutil``, both lazily: without them the run goes on and the missing part is
marked absent with its reason. This ``__init__`` imports nothing, so that reading a
trace or deriving figures (``trace``, ``figures``, ``window``) never loads a reader.
"""
