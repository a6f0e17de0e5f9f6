"""The capture behind traces/capture/redsim_capture.py, in modules of under 500 lines."""
