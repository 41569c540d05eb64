"""Tests of the parallel combinators (issue 12): pb.map, pb.vmap and the reducers."""
