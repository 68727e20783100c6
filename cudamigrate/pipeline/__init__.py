"""The scan pipeline: discover files, prefilter, run the engine (in workers), cache results, replay whole scans."""
