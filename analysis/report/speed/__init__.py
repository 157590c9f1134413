"""How fast: the report families on throughput (threads, scaling and the cost model, where the time
goes, hogwild's races, uneven workers, the practitioner's shape, 16 cores, the GPU, vector_env's
check, TensorBoard's cost)."""
