"""Runner-pool stability qualification: may this pool's figures gate at all? (R15)

Input: result artifacts from N *allocations* (runner jobs, each named by its run label),
each taking K samples of every selected bucket. Per bucket:

* coverage checks fail closed (INCONCLUSIVE_DO_NOT_GATE) and name every missing piece:
  one fingerprint, exactly N allocations on at least ``min_runners`` runners with one
  runner each, K samples with indices 0..K-1 and unique ids in every allocation, the
  expected hardware, branch and commit;
* metric checks flag a pool whose noise would hide a real regression
  (UNSTABLE_DO_NOT_GATE): pooled CV, any sample or any runner's median too far from the
  pooled median, and the drop the gate's own verdict rule would need before it blocks;
* what passes both is STABLE_ENOUGH_TO_GATE.

Beyond the verdict it names each runner's offset and samples (which machine to drain),
says per bucket the smallest regression the gate could detect, and measures the noise
calibration the gate reads (``gate.calibration``). The scope is explicit: only the
selected buckets are expected, so a rescoped run is judged on what it was asked to
collect. Qualification never writes baselines.

The package reads as the verdict is built: ``observations`` (what the artifacts hold),
``coverage`` (what is missing), ``metrics`` (the pool's noise against the limits),
``rule`` (what the gate's verdict rule needs on this pool, and the noise calibration) and
``verdict`` (per bucket and for the pool).
"""
