"""The report page's text for each figure: the question it answers and how to read it (page.py
fills each `{Macro}` from the report's numbers)."""

FIGURE_TEXT = {
    "threads": (
        "Time per gradient step against torch intra-op threads, per network and batch size.",
        "Do more torch threads make one gradient step of a small Q-network faster? Each line is one network "
        "and batch size, timed alone: a line that falls to the right gains from threads, one that rises loses. "
        "The CartPole MLP at batch 32 took {ThreadsCartpoleMlpBatchThreeTwoOneUs} µs a step on one thread "
        "and {ThreadsCartpoleMlpBatchThreeTwoMostUs} µs on {ThreadsMost} threads."),
    "scaling": (
        "Env steps per second once learning starts against workers (top) and parallel efficiency (bottom), at a "
        "free and a 1 ms env step (median over seeds per cell), with ideal linear scaling and the cost model's "
        "prediction of that rate (dashed) from the components the same sweep measured.",
        "How far does moving work into worker processes scale on 2 cores? A design above single_env's line "
        "made more env steps/s at that worker count (medians of 3 runs: not tested; the answer table's "
        "speeds carry the test), and the dashed lines show how well the cost model predicted each cell. At a "
        "free env step single_env made {ScalingSingleCostZero} env steps/s once learning, and with 2 workers "
        "hogwild's median was {SpeedupHogwildTwoCostZero}x and actor_learner's {SpeedupActorLearnerTwoCostZero}x "
        "its."),
    "learning_curves": (
        "Holdout return against env steps, one panel an env, IQM over seeds with 95% stratified-bootstrap "
        "bands.",
        "Do the parallel designs learn as well per env step? Curves that overlap learn alike per env step "
        "(per_hour measures learning per second of training). The "
        "final holdout IQM on CartPole was {CartPoleSingleEnvFinal} for single_env and "
        "{CartPoleActorLearnerFinal} for actor_learner."),
    "speed_quality": (
        "Speed against quality: each design's median env steps/s once learning has started (from runs made "
        "alone: which, below) and IQM of the headline runs' mean holdout return over checkpoints, with 95% "
        "intervals; the dashed line joins the point estimates no other design beats on both (not a test: their "
        "intervals may overlap).",
        "Which design is both fast and learns well? Right is faster and up learns better; a design on "
        "the line is beaten by no other's point estimate on both. On CartPole single_env made {CartPoleSingleEnvSteps} "
        "env steps/s once learning and actor_learner {CartPoleActorLearnerSteps}."),
    "time_breakdown": (
        "Share of training wall-clock time per group of components (act, env, learn, replay, hand-off, "
        "weights, other, wait), for the main process (the learner) and for each worker, at one and two "
        "workers; * marks the role named as the bottleneck.",
        "Where does a run's time go, and which role bounds it? Each bar splits one role's training time "
        "into its components; the starred role is the bottleneck, the one to make cheaper first."),
    "policy_lag_shares": (
        "Policy lag of sampled transitions, age of acting weights at hand-off, and each worker's share of "
        "env steps and sampled transitions (times the number of workers: 1 is an equal share).",
        "Do workers hand the learner stale data, and does any worker crowd the others out? The lag and "
        "the age say how old the sampled data and the acting weights were; a share of 1 means a worker "
        "gave exactly its equal part."),
    "utd_grid": (
        "high_utd on CartPole: return at 25k and 50k env steps and the share of runs that diverged, per "
        "updates per env step (utd) and mitigation (IQM over seeds).",
        "Do many updates per env step learn faster, and what keeps the Q-values from diverging? Compare "
        "each mitigation's returns and diverged share along the utd axis. At utd 16, "
        "{UtdSixteenNoneDiverged} of the runs diverged without a mitigation and "
        "{UtdSixteenLayerNormDiverged} with LayerNorm."),
    "utd_long": (
        "CartPole to {UtdLongBudget} env steps, the utd sweep's long cells: each seed's holdout return (thin) "
        "and the median over seeds (thick), for single_env, high_utd at utd 4 with LayerNorm, and that with "
        "last-layer or full-network resets.",
        "Does high_utd keep CartPole once it has solved it, and do resets help it keep it? A cell whose thick "
        "line stays at 500 keeps it. Without resets, {UtdLongNoneFell} of {UtdLongNoneReached} seeds fell below "
        "475 after first reaching 500; with last-layer resets {UtdLongLastFell} of {UtdLongLastReached}, with "
        "full-network resets {UtdLongAllFell} of {UtdLongAllReached}."),
    "hogwild": (
        "Hogwild with and without the lock: left, each run's share of optimizer steps that overlapped "
        "another worker's write against its final return; middle, env steps/s once learning starts of the "
        "runs made alone (where none was, the mean holdout return over checkpoints); right, the final return.",
        "Do hogwild's lock-free workers overwrite each other's updates, and does that cost learning? The "
        "left panel shows how often writes overlapped, the others whether the lock-free runs learned "
        "worse than the locked ones or single_env. Without the lock "
        "{HogHogwildNoLockOverlapMin}-{HogHogwildNoLockOverlapMax}% of optimizer steps overlapped "
        "another worker's write."),
    "uneven": (
        "One slow worker (+1 ms per env step) among two: throughput (env steps/s once learning starts), the "
        "slow worker's share of env steps, replay and sampled batches (times 2: 1 is an equal share), the age "
        "of each actor's acting weights at hand-off, and holdout return at equal env steps (IQM, 95% CI).",
        "When one worker is slower, does the fast one crowd out its data, and does that cost learning? "
        "Compare actor_learner with equal quotas and with free-running actors: a share below 1 is the "
        "slow worker's data crowded out. Running free, the slow actor gave "
        "{UnevenActorLearnerTwoFreeQuotasSlowShareEnvSteps} times an equal share of the env steps."),
    "improvement": (
        "Probability of improvement over single_env per env step (Mann-Whitney), with 95% percentile-"
        "bootstrap intervals and each comparison's Holm p over its env's learning family; speed is not drawn "
        "(3 runs a side cannot tell speeds apart).",
        "How likely is a run of each design to beat a single_env run? 0.5 means no difference; an "
        "interval that holds 0.5 means the seeds cannot tell the two apart. On CartPole an actor_learner "
        "run beat a single_env run on the mean holdout return with probability "
        "{PoiCartPoleActorLearnerHoldoutAuc}."),
    "practitioner_shape": (
        "The practitioner's shape (an env step that waits): env steps/s once learning starts against workers "
        "(median over seeds, min-max bars), the cost model's prediction of that rate written before the runs "
        "(dashed), and the practitioner's reported curve (black, their numbers as they reported them).",
        "With an env that waits, how many actors pay, and does the learner or the hand-off become the "
        "bottleneck? A curve rises while its workers bound the run and flattens or falls where the "
        "learner or the cores do. single_env made {ShapeSingleEnv} env steps/s once learning and actor_learner "
        "peaked at {ShapeActorLearnerBest} with {ShapeActorLearnerBestWorkers} actors."),
    "practitioner_shape_check": (
        "The second check of the practitioner's shape: env steps/s once learning starts against workers, with "
        "the mended cost model's prediction written before the runs (dashed).",
        "Does the mended cost model predict a new sweep of the same shape without refitting? Where the "
        "dashed line meets the measured points, it did. {ShapeCheckCellsWithinTwenty} of "
        "{ShapeCheckCells} cells came within 20% of the prediction."),
    "practitioner_shape_confirm": (
        "The third check of the practitioner's shape: plan's recommendation, its runner-up and new worker "
        "counts, env steps/s once learning starts against the prediction written before the runs (dashed).",
        "Does pricing each role's CPU past the cores predict the point plan recommends? Compare the "
        "recommended point's measured speed with its dashed prediction. {ShapeConfirmRecommended} "
        "measured {ShapeConfirmRecommendedMeasured} env steps/s once learning against "
        "{ShapeConfirmRecommendedPredicted} predicted; {ShapeConfirmCellsWithinTwenty} of {ShapeConfirmCells} "
        "cells came within 20%."),
    "sixteen_cores_shape": (
        "The practitioner's shape on 16 real cores (an env step burning 2.2 ms of CPU, one run at a time): env "
        "steps/s once learning starts against workers (median, min-max bars over 1-3 runs), each point labelled "
        "with the bound its runs' own breakdown names (A actors, L learner, E envs, W workers), beside the "
        "practitioner's reported curve (black) and the 2-core emulation with an env that waits (dotted); no test "
        "stands behind these.",
        "Does moving env stepping into workers pay on a machine with many cores, and what bounds it? A curve "
        "rises while its workers bound it and flattens where the learner does. single_env made "
        "{SixteenSingleEnv} env steps/s once learning; actor_learner made {SixteenActorLearnerOneTwo} at 12 "
        "actors ({SixteenActorLearnerOneTwoGain}x, where the practitioner got {SixteenPractitionerGain}x) and "
        "{SixteenActorLearnerSixteen} at 16, where its learner bounds it."),
    "per_hour": (
        "Learning per second of training on an env whose step waits: holdout return at the last "
        "checkpoint each run had reached by then (left) and against env steps (right), IQM over seeds with "
        "95% stratified-bootstrap bands, evaluation off the clock, each run alone.",
        "Does the faster run learn as well per second of training? A curve above single_env's reached a "
        "higher return in the same training time, from more env steps (right). At {PerHourWindow} s "
        "single_env had reached a holdout IQM of {PerHourSingleEnvIqm} and actor_learner "
        "{PerHourActorLearnerIqm}, from {PerHourStepsRatioLow}-{PerHourStepsRatioHigh}x the env steps."),
    "minatar_suite": (
        "The MinAtar suite across games, on returns divided by each game's anchor (Young & Tian's DQN): "
        "left, the aggregate IQM over games x seeds with 95% intervals; middle, performance profiles; "
        "right, P(design > single_env) over game-seed pairs.",
        "Does what Breakout showed hold on more games? Each design is set against single_env across every "
        "complete game at once: a point left of single_env's, or a probability below 0.5, learned less. "
        "Over {MinatarAggGames} complete games an actor_learner run beat a single_env run on the final "
        "return with probability {MinatarAggActorLearnerFinalPoi}."),
}
"""Figure file name -> (caption, answer): the question the figure answers and how it shows it.
`{Macro}` takes report.macros[Macro]; a sentence naming a macro the report lacks is left out."""
