"""generalized_alpha on long 3D chains: wall time per simulated second, Newton iterations a step, and a 1000-link
run against dopri5.

The slender spherical chain of ``benchmarks/spatial_simulate.py`` (``hanging_chain``: N links, 1 m and 1 kg in
all, axial inertia a tenth of the transverse one), tilted by a small (1e-3 rad) or a large (0.3 rad) angle and
pushed sideways (the top link turning at 5/3 of the tilt per second), stepped by generalized_alpha (rho_inf =
0.9, newton_tol = 1e-12) at dt = 0.01 s for up to 1 s of simulated time: wall time per simulated second (warm:
compiled before timing; and the run's CPU time a link-step, which the load of a shared machine changes less), Newton
iterations and factorisations a step, or where Newton fails the time it reached (SimulationError, the samples so far
kept). Then a 1000-link chain against dopri5 at rtol = atol = 1e-6 over the
same time: the tip's distance between the two runs and the ratio of their wall times.

    python3 benchmarks/implicit3d.py [--sizes N ...] [--t-end T] [--reference N]

Results in benchmarks/results/implicit3d.json.

Measured (2-core machine shared with other work, wall times 2-3x those of a quiet one and varying 1.5x from run to
run; wall time per simulated second, Newton iterations and factorisations a step; the loop iterates on the cheap
matrix and falls back to the exact one, its spherical joints' spins held until the bending's corrections contract,
starting on the exact one after two steps that ended there), with the spin damping that fell 100x a factorisation
before it in brackets (the same load, run just before):

    N       tilt   reached  wall/sim s     us/link-step  iter/step    fact/step    (failure)
    100     1e-3   1.00     0.044 (0.065)  4.4 (6.5)     6.36 (6.39)  1.03 (1.06)
    1000    1e-3   1.00     1.9 (4.5)      19 (45)       4.42 (7.42)  3.46 (6.38)
    100     0.3    1.00     0.23 (0.42)    23 (42)       6.31 (7.46)  5.04 (7.11)
    1000    0.3    0.01     -              -             -            -            Newton did not converge at
                   (0.05)                                                          t = 0.02 s (0.06 s)

and N = 1000 against dopri5 (rtol = atol = 1e-6): the small swing over 1 s, 37.1 s against 1.9 s (19x; 35.4 s
against 4.5 s, 7.8x, before), tips 9.6e-7 m apart (the same before: the converged steps are the same). The 0.3 rad
swing of N = 100 over 1 s: the final q within 2e-12 of the run before, tip 8.2e-5 m from dopri5 at rtol 1e-9 (the
scheme's error at dt = 0.01 s). Earlier, before the spin damping (the same machine, quieter): N = 1000 small swing
13.09 iterations and 9.57 factorisations a step; N = 100 at 0.3 rad stopped at t = 0.13 s; N = 10000 stopped at
0.09 s on the small swing and at the first step on the large one (not rerun).
Why the large swings stop: ``recursive_mbd.integrate.spatial_implicit``.

Absolute coordinates (``--formulations augmented``: ``rm.simulate(..., formulation="augmented")``, the exact
Newton matrix of ``recursive_mbd.integrate.augmented3d_implicit``, full Newton; the same machine at a load of
about 5, ``--rho-inf 0.9 0.5 --reference 0``; dopri5 at rtol = atol = 1e-6 run apart in the same conditions):

    rho_inf  N     tilt   reached  wall/sim s  us/link-step  iter/step  splits  dopri5 [s]  tip diff [m]
    0.9      100   1e-3   1.00     0.19        18.5          2.04       0       0.26        1e-6
    0.9      1000  1e-3   1.00     2.45        24.5          2.54       0       38.4        1e-6
    0.9      100   0.3    1.00     0.36        35.6          4.10       0       0.44        1.6e-4
    0.9      1000  0.3    0.77     -           45.7          6.39       9       39.3        -   (the Newton matrix
                                                                                    singular at t = 0.78 s)
    0.5      100   1e-3   1.00     0.22        21.5          2.00       0
    0.5      1000  1e-3   1.00     2.35        23.5          2.03       0
    0.5      100   0.3    1.00     0.27        27.3          3.11       0
    0.5      1000  0.3    1.00     3.16        31.6          3.33       0       39.3        1.3e-4 (12x)

(N = 1000 at 0.3 rad and rho_inf = 0.9: the whip reaching the free end puts the last links in compression, where
the steps, halved down to dt / 16, find no root near the predictor; ``augmented3d_implicit`` says more.)

Long chains in absolute coordinates after the spherical joints' local blocks were eliminated by 3 x 3 blocks and the
samples' joint coordinates compiled (``--formulations augmented --tilts 1e-3 --reference 0 --sizes N``, one process
a size, the shared machine at a load of 3 to 6, the run getting 40-75% of a core; peak RSS: the process's peak
resident memory, ``resource.getrusage``; M-ABD: 0.84 us a link-step on one thread):

    N      t_end  wall/sim s  us/link-step  iter/step  splits  peak RSS [MB]
    1e4    1      4.19        4.19          2.78       0       253
    1e5    1      58.1        5.81          3.07       0       728    (rerun with the round-off test of a stalled
                                                                    step: 150 s, 3.07 iterations a step, no split,
                                                                    at a load of 5.8 with a test run beside it)
    1e6    0.1    5800        58            13.90      2       4294   (40% of a core: 240 s of CPU for the 0.1 s,
                                                                    setup included; not a round-off stall: the
                                                                    first step's corrections wander at 4e-6 to
                                                                    5e-4, the residual's round-off 9e-14)

Then with Newton's first guess moving the bodies on at the last step's mean velocity (``augmented3d_implicit``,
"First guess"; the same command, one process a size, the machine shared with other sessions at a load of 15 to 19,
the run getting 13-14% of a core, so wall times 7x those of a free core):

    N      t_end  wall/sim s  us/link-step  iter/step  splits  peak RSS [MB]
    1e5    1      214         21.4          2.48       0       1787   (the kernels compiled in the process: its
                                                                    memory counts; 728 before, from a warm cache)
    1e6    0.03   3500        35            2.00       0       3928   (3 steps; compiled in the process too; 141 s
                                                                    of user CPU, setup and compilation included;
                                                                    ``/usr/bin/time -v``: 3.93 GB)

Then with a tree of spherical joints iterating in two fused passes (``augmented3d_implicit``; the same command, one
process a size, warm cache; before: the same command on the code before, just before; the machine shared with other
jobs, load 10-11 before and 15-20 after, so the wall times say little; ``benchmarks/implicit3d_phases.py``
measures both kernels' CPU time in one run: 731-759 ns a body an iteration before, 340-343 after):

    N      t_end  wall/sim s       us/link-step   iter/step  splits  peak RSS [MB]
    1e4    1      16.6 -> 9.26     16.6 -> 9.26   2.48       0       235 -> 232
    1e5    1      167 -> 93.9      16.7 -> 9.39   2.48       0       520 -> 479
    1e6    0.05   - -> 4050        - -> 40.5      2.00       0       2832   (the process got 6% of a core: 7.6 s of
                                                                    user CPU in all, setup included;
                                                                    ``/usr/bin/time -v``: 2.90 GB, 3.93 before)

The same two sizes over the whole second on the quiet machine (load average below 1, one process each, the kernels
in the cache; peak RSS from ``/usr/bin/time -v``, the 1e5 process compiling part of its kernels):

    N      t_end  wall/sim s  us/link-step  iter/step  splits  peak RSS [MB]
    1e5    1      11.1        1.11          2.48       0       2170   (149 s of CPU with the compilation)
    1e6    1      101         1.01          2.48       0       2916   (104 s the whole process, 2.99 GB)

The large swings in absolute coordinates, iterations a step (``--formulations augmented --tilts 0.3 0.5 --sizes 100
1000 --rho-inf 0.9 0.5 --reference 0``, the code of this revision, one process, the shared machine at a load of 13 to
17; the Newton matrix is exact, checked against finite differences at up to 75 rad/s in
``tests/test_augmented3d_implicit.py``, so these are the first guess's and the acceptance rule's, as
``augmented3d_implicit`` explains):

    rho_inf  N     tilt  reached [s]  iter/step  splits  (failure)
    0.9      100   0.3   1.00         4.15       0
    0.9      1000  0.3   0.78         6.58       9       the Newton matrix singular at t = 0.789375 s
    0.9      100   0.5   0.74         9.96       18      Newton did not converge at t = 0.740625 s
    0.9      1000  0.5   0.60         8.03       10      the Newton matrix singular at t = 0.60875 s
    0.5      100   0.3   1.00         3.51       0
    0.5      1000  0.3   1.00         3.67       0
    0.5      100   0.5   1.00         3.86       0
    0.5      1000  0.5   1.00         4.16       0

Then with a step accepted also where ten times the next correction that quadratic convergence predicts, for the
centres of mass and the rotations apart, is below newton_tol (``augmented3d_implicit``, "Iterations a step": the
corrections of every step logged and the rule replayed on them first; the same command, one process, the shared
machine at a load of 10):

    rho_inf  N     tilt  reached [s]  iter/step  splits  (failure)
    0.9      100   0.3   1.00         3.97       0
    0.9      1000  0.3   0.78         5.92       9       the Newton matrix singular at t = 0.789375 s
    0.9      100   0.5   0.74         9.74       18      Newton did not converge at t = 0.740625 s
    0.9      1000  0.5   0.60         8.05       10      the Newton matrix singular at t = 0.60875 s
    0.5      100   0.3   1.00         3.26       0
    0.5      1000  0.3   1.00         3.45       0
    0.5      100   0.5   1.00         3.43       0
    0.5      1000  0.5   1.00         3.73       0

(the failures at the same times as before) and the small swing (``--tilts 1e-3 --sizes 10000 100000``, the same
load 10 to 15, the kernels compiled in the process): N = 1e4 and 1e5 over 1 s, 2.12 iterations a step (2.48
before), 0.83 us of CPU a link-step (0.99 to 1.00 before, measured apart: the 15% fewer iterations), no split; the
third iteration, where a step still takes one, only confirms round-off (its correction 2e-14 to 5.3e-13, the
round-off at the iterate about 1e-13), but the prediction after the second leaves it on 12 steps of 100. At most
3 iterations a step on the large swings is not reached: the second correction of a step, about 1.6e-4 there, is
left by the first guess, and none of the guesses tried cut it.

Then with Newton's first guess the constant acceleration where the accelerations are smooth, the mean velocity where
they jump or change by more than half themselves (``augmented3d_implicit``, "First guess"; the counts from
``benchmarks/implicit3d_guesses.py``'s runs, which take the steps as this script does; the shared machine at a load
of 9 to 15, the counts do not depend on it):

    rho_inf  N     tilt  reached [s]  iter/step  splits
    0.9      100   0.3   1.00         3.86       0
    0.5      100   0.3   1.00         3.11       0
    0.5      1000  0.3   1.00         3.22       0
    0.5      100   0.5   1.00         3.22       0
    0.5      1000  0.5   1.00         3.50       0

and the small swing (1e-3 rad, rho_inf = 0.9, N = 1000) 2.00 iterations a step (2.01 before); 3000 links at 0.3 rad,
rho_inf = 0.9, over 0.5 s 3.20 (3.20). The median first correction falls by 1.3x to 1.5x, the second by 1.6x to 3.7x;
the constant acceleration at every step would cut them 10x and 7x to 20x (3.00 to 3.37 iterations a step at
rho_inf = 0.5, 3.78 at 0.9) but takes 10.6 a step and halved steps on a 3000-link chain tilted at its pin, 4.24 over
0.5 s where the accelerations change by more than the guesses differ. At most 3 iterations a step is not reached.
At newton_tol = 1e-10 (the acceptance rule replayed on every step's logged corrections) 2.99 to 3.24 at
rho_inf = 0.5 and 3.46 at 0.9. The whips at rho_inf = 0.9 (1000 links at 0.3 rad, 100 and 1000 at 0.5 rad) still
stop at the same times as before, 0.789, 0.741, 0.609 s (``augmented3d_implicit``, "Measured", says why: the free
end's last link spinning).

Where the time of a run goes (the small swing; CPU times, since the shared machine ran at a load of 9 to 18; each
kernel timed by process_time around its calls from Python). N = 1e5 over 0.5 s: 4.3 s of CPU in rm.simulate, of which
the Newton iterations 3.6 s (362 ns a body and iteration, 2.00 iterations a step), the first guess and the step's
end 0.13 s, the setup (absolute coordinates, the initial accelerations) and the samples' joint coordinates 0.58 s:
the iterations are 84% and the work outside the kernels is not worth cutting. The iterations a step, from the
corrections of every step of N = 1e4 over 1 s (the same 2.48 a step as 1e5 and 1e6): steps 1 to 52 take 2 (the
first correction, max(c_stiff, c_damp) |dvdot| as the convergence test scales it, 2e-4 and nearly uniform along
the chain; the second 1e-9 to 1.5e-8; the third would be round-off, 2e-14); steps 53 to 100 take 3, because the tilt's
wave reaches the free end (its tension vanishing there) and the first correction grows to 3e-4 .. 1.7e-3 at the
lowest links, the second to 2e-8 .. 6e-7, so the error that the contraction predicts, theta / (1 - theta) times it
(about c2^2 / c1: 2e-11 .. 7e-10), exceeds newton_tol = 1e-12, while the third correction is 5e-14 .. 3e-13. A first
guess extrapolated from the last two steps' mean velocities (2 rate_n - rate_n-1) makes the first correction 7e-5
before the wave arrives but not smaller after it: 2.42 iterations a step instead of 2.48.

Tried: the correction applied and each body's new state made in the back-substitution's pass (no update pass of its
own, none after the accepted iterate), together with the spherical pass's products by skew matrices written out
([a] B, A [a], [a][b] = b a^T - (a . b) 1): the same iterations and end states within 1e-13 (positions) and 4e-11
(velocities) at N = 1e3 and 1e4, but 370, 372 and 390 ns a body and iteration at N = 1e5 against 362, 361 and 382 ns
before (three pairs run side by side), so not kept. Its 1e6 run over 1 s: 102 s of CPU for the whole process (93.1
user, 8.8 system), 2.48 iterations a step, peak 2.99 GB (``/usr/bin/time -v``; 10 min 46 s of wall time at a load
of 11 to 18). The skew products alone (kept): 348, 357, 363 ns against 365, 371, 372 at N = 1e4 and 352, 355, 362
against 367, 367, 377 at N = 1e5 (three pairs each, side by side, a load of 7 to 8): 3-4% of an iteration. The arrays
(1.3 KB a body kept; by a count of what each pass reads and writes, about 4 KB a body and iteration) no longer fit a
cache at these sizes, and cutting the arithmetic of the pass gains little there. Whole runs with the skew products
(``/usr/bin/time -v``, warm cache, CPU time the figure): N = 1e5 over 1 s side by side with the code before, load 4:
1.00 against 1.02 us of CPU a link-step (11.4 against 11.5 s of CPU for the whole process); N = 1e6 over 1 s alone,
load 3 to 4: 0.99 us of CPU a link-step (149 s of wall time), 2.48 iterations a step, 102 s of CPU for the whole
process, peak 2.99 GB. The targets (1e6 links in 60 s, 0.6 us a link-step) are not met: they need fewer iterations
(the third of half the steps, above) or less memory traffic an iteration, not a cheaper pass.

Then with the fused pass split in two (``augmented3d_implicit``: each body's own blocks, the update and the samples'
joint states on numba's threads from 4096 bodies, in 16 ranges of bodies; the elimination leaves first after them)
and the run's initial dynamics taken by the same passes (c_stiff = 0) instead of the explicit route's tree solve. All
on the shared 2-core machine at a load of 9 to 16, where every process gets 15-25% of a core: wall times say how the
machine was shared, not what the code costs, and two threads cannot both run at once. One process after another,
N = 1e5 over 1 s (``--formulations augmented --tilts 1e-3 --reference 0 --sizes 100000``, warm cache, load 13 to 16;
CPU time a link-step inside ``rm.simulate``, the whole process's user CPU, wall time, peak RSS):

    code                        CPU us/link-step  user CPU [s]  wall [s]  peak RSS [MB]
    before                      0.961             10.1          82        474
    split, NUMBA_NUM_THREADS=1  1.05              11.1          98        515
    split, 2 threads            1.59              16.5          114       515

The passes alone at N = 1e5 (the first step's first iterate, median of 7 calls, load 9 to 10, CPU ns a body; the
two-thread figures count both threads): the update 43 before, 43 split on one thread, 80 on two; the fused forward
pass 254-264, 270-275, 427-442; the back-substitution 20-24 in all. The same bits on one and on two threads; 7e-14 of
the largest entry from the code before. N = 1e6 over 1 s on two threads (the same command, load 13 to 14, the process
getting 19% of a core): 1.08 us of CPU a link-step (both threads), 2.48 iterations a step, 103 s of user and 8 s of
system CPU for the whole process, 591 s of wall time, peak 3.39 GB (``/usr/bin/time -v``; 2.99 GB before: the
per-body record of the split, 99 numbers a body, less the joints' rows it now holds). On this loaded machine the split
does not pay: on one thread it costs 4-9% more CPU (the record written and read back: 0.8 KB a body an iteration),
and a second thread adds the time its partner waits at the end of each parallel pass. On the quiet machine (load
1.3, the same command, one process after another, two pairs): N = 1e5 over 1 s takes 9.48 and 9.08 s of wall time
before, 8.05 and 7.72 s split on two threads (15% less; 1.24 and 1.19 us of CPU a link-step, both threads), 9.54 s
split on one thread (0.954 us of CPU, the same as before). A first run with an empty cache (a 5-link chain) compiled
for 175 s of CPU against 150 s before (the parallel kernels; the two not at the same load).

Then with the fused iteration's records kept for two ranges of bodies, not for every body (``augmented3d_implicit``:
the elimination of a range on one thread beside the next range's records on the other), the children's sums in a
(nbodies, 8, 6) array cleared as read, the conversion's workspace freed before the steps' arrays are touched, the
steps' arrays and state freed before the result's arrays are made, and the last sample kept, not copied. Where the
memory of N = 1e6 went before (RSS by phase, ``/proc/self/status`` with the peak reset around each call, warm cache):
the interpreter and numba 0.19 GB, the model 0.37 GB (its table of the builder's columns beside body_real), the
joint-coordinate workspace of the conversion 0.56 GB (freed only after the run's start), the steps' arrays 1.73 GB
(the record of 99 numbers a body 0.79 GB of it), the state and first guess 0.2 GB, the samples 0.1 GB, and at the
end the result's copies of the samples and joint coordinates beside all of them: peak 3.39 GB there. The same
command on the shared machine at a load of 8, one thread (NUMBA_NUM_THREADS=1; ``/usr/bin/time -v``): N = 1e6 over
1 s, peak 2.48 GB (3.39 before, two threads, load 6), 0.968 us of CPU a link-step (0.969 before), 2.12 iterations a
step, 93.8 s of user CPU for the whole process (91.8 before). End states at N = 1e4 over 1 s the same bits as before
(and on one and two threads). Two threads on this loaded machine wait at every round (9 a pass from 1e5 bodies, and
more rounds than the two parallel passes before): 16.7 s of wall time for N = 1e4 against 3.1 s on one thread at a
load of 8; N = 1e5 over 1 s on two threads, one process after another at a load of 5: 28.4 s of wall time and 18.9 s
of CPU against 20.8 and 13.9 s before (the same end state, bit for bit; 2.09 iterations a step both), 23.8 and 15.9 s
with PIPELINE_RANGES = 3 (fewer rounds, larger records). On the quiet machine (load 0.3 to 1.4), N = 1e5 over 1 s,
the two versions one after the other, twice: 7.83 and 6.41 s of wall time against 7.05 and 6.70 s before (1.55 and
1.27 us of CPU a link-step against 1.11 and 1.06: the threads wait spinning), the same 2.09 iterations a step. With
the absolute route's newton_tol at 1e-10 m/s (2.00 iterations a step), quiet (load 0.3), the command above at N = 1e6:
68.3 s of wall time for the simulated second (0.683 us a link-step; 1.1 of CPU), 71 s for the whole process, peak
RSS 2.48 GB.

Then with a shorter sequential elimination (``_kernels.augmented.implicit3d``: the records keep A_ip's moment rows
less Hm times its force rows; the multipliers' rows stay joint forces through the elimination and are turned by F^T
in the back-substitution, a product by a vector there instead of two by matrices on the sequential pass; the
non-finite pose test in the records; the pipeline's first range's records on both threads). The pass's two halves
alone on one thread (``NUMBA_NUM_THREADS=1 python benchmarks/implicit3d_phases.py --sizes 6000 --passes 300``: the
minimum of 300 calls, records kept in the shared cache as the pipeline's ranges are; the machine shared at a load of
11, each version twice, one after the other): the records 148.6 and 149.8 ns a body before, 152.1 and 150.8 after;
the elimination 162.3 and 160.2 before, 143.0 and 143.2 after. The pipeline's two sides are now balanced: its
critical side from about 161 to 151 ns a body, and the pass (r / 8 + 7 max(r, e) / 8 + e / 8 before, r / 16 +
7 max(r, e) / 8 + e / 8 after, r a record, e an elimination, eight ranges) from about 181 to 159 ns a body. Why not a
two-ended elimination of the chain (tips and root at once, meeting in the middle): ``implicit3d``'s section on a
tree of spherical joints (a root-side body costs about 1.5 times a tip-side one, and the records already overlap
the elimination: 163 ns a body at best). Whole runs, the command above at N = 1e5, the code before and this one
alternately: on one thread (NUMBA_NUM_THREADS=1, load 16 to 18) 0.920 and 0.920 us of CPU a link-step before, 0.902
and 0.877 after (the work: 2-5% less); on two threads at a load of 13 to 16, 1.83 and 1.87 us of CPU before, 1.90 and
1.95 after, 62 to 73 s of wall time both (the machine's share, not the code: every round of the pipeline waits for a
time slice there, 15-20 ms a round at N = 1e5 against 2-6 ms of work, and the waiting threads spin), 2.00
iterations a step both. N = 1e6 over 1 s on two threads (``/usr/bin/time -v``, load 12 to 17, the process getting 20%
of the machine): 525 s of wall time, 1.07 us of CPU a link-step, 105 s of user CPU, peak RSS 2.48 GB (2,477,780 KB,
as before), 2.00 iterations a step. On the quiet machine (load 0.03 to 1.6), the command above at N = 1e6 three
times, one after the other: 60.2, 58.7 and 58.8 s of wall time for the simulated second (median 0.588 us a
link-step; 1.02 to 1.03 us of CPU on the two threads), 60.3 to 62.9 s for the whole process, peak RSS 2.52 GB, 2.00
iterations a step: under the 60 s (0.6 us a link-step) of the target, narrowly.

Then with each converged step's velocities projected mass-orthogonally onto the joints' velocity rows
(``augmented3d_implicit``, "Velocities": one more pass each way a step, the fused pipeline on a tree of spherical
joints). The large swings (``--formulations augmented --tilts 0.3 0.5 --sizes 100 1000 --rho-inf 0.9 0.5
--reference 0``, the code before and this one one after the other, one process each, the shared machine at a load
of 4 to 5; CPU us a link-step of the run):

    rho_inf  N     tilt  reached [s]    iter/step     splits   CPU us/link-step  (before: failure)
    0.9      100   0.3   1.00 / 1.00    3.41 / 3.15   0 / 0    1.68 / 1.72
    0.9      1000  0.3   0.78 / 1.00    5.55 / 3.33   9 / 0    2.66 / 1.59       the Newton matrix singular at
                                                                                 t = 0.789375 s
    0.9      100   0.5   0.74 / 1.00    9.43 / 3.33   18 / 0   4.42 / 1.77       Newton did not converge at
                                                                                 t = 0.740625 s
    0.9      1000  0.5   0.67 / 1.00    6.43 / 4.00   8 / 1    2.90 / 1.88       Newton did not converge at
                                                                                 t = 0.673125 s
    0.5      100   0.3   1.00 / 1.00    2.89 / 2.88   0 / 0    1.44 / 1.58
    0.5      1000  0.3   1.00 / 1.00    3.05 / 3.04   0 / 0    1.33 / 1.54
    0.5      100   0.5   1.00 / 1.00    3.00 / 2.98   0 / 0    1.47 / 1.61
    0.5      1000  0.5   1.00 / 1.00    3.18 / 3.16   0 / 0    1.40 / 1.55

and N = 1000 at 0.3 rad, rho_inf = 0.9, against dopri5 at rtol = atol = 1e-6 (``--tilts 0.3 --sizes 1000 --rho-inf
0.9 --reference 1000``, load 4): 1 s in 0.687 s against dopri5's 34.3 s (50x), the tips 5.7e-5 m apart, 3.33
iterations a step (the issue's at most 3 not met: the first guess's and the acceptance rule's). The Newton
iterations' passes unchanged (``NUMBA_NUM_THREADS=1 python benchmarks/implicit3d_phases.py --sizes 6000 --passes
300``, the code before and this one alternately, twice, load 8): the records 153.1 and 155.2 ns a body before, 151.7
and 154.2 after, the elimination 142.4 and 151.5 before, 148.7 and 150.0 after; the projection's records 43.3 and
42.5 ns a body (its elimination and back-substitution an iteration's), so by these halves a projection costs about
two thirds of a Newton iteration; on the large swings above (rho_inf = 0.5, the same iterations) 10-16% more CPU a
link-step.
The small swing of N = 1e4 over 1 s (1e-3 rad, rho_inf = 0.9; with and without the projection, PROJECT_VELOCITIES,
alternately in one process, twice, two threads, load 4.3 to 4.6): 14.8 and 14.5 s of wall time with it, 11.0 and
10.9 s without (+34%: the projection's share of the run about a quarter), 2.00 iterations a step both, no split.
On the quiet machine (load 0.3 to 1.5, the kernels cached; ``/usr/bin/time -v``), N = 1e6 over 1 s, the command
of the 1e6 runs above: **84.4 s** of wall time for the simulated second with the projection (0.844 us a link-step,
1.4 us of CPU, 2.02 iterations a step, peak RSS 2.60 GB), 59.9 s with ``--no-projection`` run just after (0.599 us,
2.00 iterations a step, 2.53 GB): the projection costs 41% there, and the 60 s target is not met with it. The
large swings' reference on the same machine (``--tilts 0.3 0.5 --sizes 1000 --rho-inf 0.9 --reference 1000``): 1 s
of the 0.3 rad swing in 0.161 s against dopri5's 16.3 s (101x), tips 5.69e-5 m apart, 3.33 iterations a step; the
0.5 rad swing 0.188 s against 18.1 s (96x), 1.55e-4 m, 4.00 iterations a step, one split step.

Then with a step's velocities projected only where a joint's velocity row is off by more than the step's accepted
Newton error can move it, newton_tol times the row's reach (``augmented3d_implicit``, "Velocities"; the rows
measured in one parallel pass at the step's end, ``_kernels.augmented.implicit3d.spherical_gaps``), Newton's
correction applied in the back-substitution's pass and the first guess made in one pass on numba's threads (the
same bits). The gaps before the projection, largest a step, every step projected: the small swing 4.6e-12 to
2.1e-8 m/s at N = 1e4 and 1.2e-12 to 2.6e-9 m/s at 1e5 (about newton_tol = 1e-10; at the pin, then at the free end
once the tilt's wave arrives), the whips 2.5e-6 to 2.5e-2 m/s. Steps projected on the small swing: 45, 34 and 27 of
100 at N = 1e4, 1e5 and 1e6 (``--projection-margin 0`` projects every step, as before); the whips at every step.
The small swing, CPU ns a link-step on one thread (NUMBA_NUM_THREADS=1; in one process every step projected,
triggered and ``--no-projection`` in turn, the code before in the next process, alternately; load 2 to 4.3):

    N      rounds  before: every step / none   this: every step / triggered / none
    1e4    3       1102 / 841                  1080 / 991 / 814
    1e5    2       1157, 1124 / 883, 842       1113, 1142 / 973, 979 / 844, 842

so the trigger takes 10% (1e4) and 13-16% (1e5) off a link-step, the two passes fewer 0-4%. The gap pass alone costs
54 ns a body on one thread (a projection 288; ``spherical_gaps`` and ``spherical_project`` timed apart at N = 1e4
and 1e5). On two threads this loaded machine says little (N = 1e5, load 3.3 to 3.6: before 2656, 2667 / 1854,
1869 ns of CPU a link-step; this 2781, 2788 / 2301, 2313 / 2006, 1958): every parallel pass waits for a time slice
there, and the trigger's pass and the first guess's add one or two a step. The whips and the large swings
(``--tilts 0.3 0.5 --sizes 100 1000 --rho-inf 0.9 0.5 --reference 0``, load 3): every case reaches 1 s with every
step projected, the iterations a step as before (3.15, 3.33, 3.33, 4.00 at rho_inf = 0.9; 2.88, 3.04, 2.98, 3.16 at
0.5; one split step on 1000 links at 0.5 rad, 0.9); 1000 links at 0.3 rad, rho_inf = 0.9, against dopri5
(``--tilts 0.3 --sizes 1000 --rho-inf 0.9 --reference 1000``, load 2.7): 0.173 s against 16.7 s (96x), tips 5.69e-5
m apart, 3.33 iterations a step (the code before, in the next process: 0.165 s against 17.1 s, 103x, the
same tips). N = 1e6 over 1 s on one thread, triggered, ``--no-projection`` and every step projected in turn in one
process (load 2 to 3; 5 min 13 s in all, peak RSS 3.01 GB): 1001, 855 and 1166 ns of CPU a link-step (2.00, 2.00,
2.02 iterations a step; 27 steps projected), so the trigger leaves 47% of the projection's cost (146 of 311 ns: 27
projections and the gap pass on the other 73 steps). Predicted for the quiet 1e6 run on two threads (not measured
here): 59.9 s of ``--no-projection`` times 1.17 (this ratio), or plus 47% of the projection's 24.5 s: 70 to 71 s
(0.70 us a link-step), under the 84.4 s before but above the 60 s of the target; 55 s would need the Newton
iteration itself (the 59.9 s) about 10% cheaper, and the projected steps and the gap pass nearly free.
Measured on the quiet machine (load 0.7 to 1.5, the kernels cached, ``/usr/bin/time -v``; the command of the 1e6 runs
above, then with ``--no-projection`` right after): **69.3 s** of wall time for the simulated second (0.693 us a
link-step, 1.2 us of CPU, 2.00 iterations a step, 27 steps projected, peak RSS 2.53 GB; 72.7 s for the whole
command with the chain's set-up), and 56.3 s without the projection (0.563 us, 2.00, 2.53 GB; 59.9 s before, the
two passes fewer): the 60 s target is met without the projection and not with it. The large swings' reference
(``--tilts 0.3 0.5 --sizes 1000 --rho-inf 0.9 --reference 1000``): 1 s of the 0.3 rad swing in 0.179 s against
dopri5's 16.5 s (92x), tips 5.69e-5 m apart, 3.33 iterations a step; the 0.5 rad swing 0.204 s against 18.5 s
(91x), 1.55e-4 m, 4.00 iterations a step, one split step; every step projected.
A diverging step given up once its correction has grown more than twice at two iterations running
(``kernels.DIVERGENCE``; iteration counts, which the load does not change, on a later and slower machine): the 0.5 rad
swing 3.88 iterations a step, its split step's failed try 4 iterations instead of 16; 0.3 rad 3.33 as before; the
same 1e6 command as above took 113 and 120 s there (1.93 us of CPU a link-step against 1.2 here, the same 27
projected steps and 2.00 iterations a step): the figures above are the faster machine's.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import resource  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from _common import command_line, print_table, write_json  # noqa: E402
from spatial_simulate import hanging_chain  # noqa: E402

import recursive_mbd as rm  # noqa: E402
from recursive_mbd.errors import SimulationError  # noqa: E402

DT = 0.01


def tip(model, q):
    """The chain's free end (ground frame)."""
    n = model.nbodies
    rod = 1.0 / n
    return rm.point_kinematics(model, q, np.zeros(model.nv), n - 1, (0.0, 0.0, -rod))[0]


def implicit_row(n, tilt, t_end, formulation="recursive", rho_inf=0.9):
    """One generalized_alpha run: a dict of its figures (wall time per simulated second, iterations a step...);
    ``formulation`` "recursive" (joint coordinates) or "augmented" (absolute coordinates: only t0 and t_end stored).
    peak_rss_mb: the process's peak resident memory so far (rows run by increasing N: the largest run's peak)."""
    model, q0, v0 = hanging_chain(n, tilt)
    options = {"formulation": "augmented", "every": 10**9} if formulation == "augmented" else {}
    start, cpu = time.perf_counter(), time.process_time()
    try:
        result = rm.simulate(model, q0, v0, t_end, method="generalized_alpha", dt=DT, rho_inf=rho_inf, **options)
        reached, failure = t_end, ""
    except SimulationError as error:
        result = error.result
        reached, failure = float(result.t[-1]), str(error).split(":")[1].strip()[:60]
        if formulation == "augmented":  # its samples are t0 and t_end only: the steps taken tell how far it got
            reached = result.nsteps * DT
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    steps = max(1, round(reached / DT))
    return {"n": n, "tilt": tilt, "formulation": formulation, "rho_inf": rho_inf, "t_end": t_end, "reached": reached,
            "wall_s": wall, "split_steps": getattr(result, "newton_split_steps", 0),
            "wall_per_simulated_s": wall / max(reached, DT), "us_per_link_step": wall / steps / n * 1e6,
            "cpu_s": cpu, "cpu_us_per_link_step": cpu / steps / n * 1e6,
            "iterations_per_step": result.newton_iterations / steps,
            "factorizations_per_step": result.newton_factorizations / steps, "failure": failure,
            "velocity_projections": getattr(result, "velocity_projections", None),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "tip": tip(model, result.q[-1]).tolist()}


def bdf_row(n, tilt, t_end, rtol):
    """One variable-step bdf run in absolute coordinates (rtol = atol; only t0 and t_end stored): a dict of its
    figures (steps, rejected steps, Newton iterations a step, wall time per simulated second, tip)."""
    model, q0, v0 = hanging_chain(n, tilt)
    start, cpu = time.perf_counter(), time.process_time()
    try:
        result = rm.simulate(model, q0, v0, t_end, method="bdf", formulation="augmented", rtol=rtol, atol=rtol,
                             every=10**9)
        reached, failure = t_end, ""
    except SimulationError as error:
        result = error.result
        reached, failure = float(result.t[-1]), str(error).split(":")[1].strip()[:60]
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    steps = max(1, result.nsteps)
    return {"n": n, "tilt": tilt, "method": "bdf", "rtol": rtol, "t_end": t_end, "reached": reached, "wall_s": wall,
            "steps": result.nsteps, "rejected": result.nrejected, "newton_failures": result.newton_failures,
            "wall_per_simulated_s": wall / max(reached, 1e-300), "us_per_link_step": wall / steps / n * 1e6,
            "cpu_s": cpu, "iterations_per_step": result.newton_iterations / steps, "failure": failure,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "tip": tip(model, result.q[-1]).tolist()}


def bdf_main(args):
    """The bdf rows (``--methods bdf``): every size, tilt and rtol, the tips against generalized_alpha's run at
    dt = 0.01 s where the same process made one (``--methods generalized_alpha bdf``)."""
    bdf_row(5, 0.3, 2 * DT, 1e-4)  # compile
    rows = [bdf_row(n, tilt, args.t_end, rtol) for rtol in args.rtols for tilt in args.tilts for n in args.sizes]
    print_table(["method", "rtol", "N", "tilt", "reached [s]", "steps", "rejected", "Newton fails", "iter/step",
                 "wall/sim s", "us/link-step", "peak RSS [MB]", "failure"],
                [[r["method"], r["rtol"], r["n"], r["tilt"], f"{r['reached']:.2f}", r["steps"], r["rejected"],
                  r["newton_failures"], f"{r['iterations_per_step']:.2f}", f"{r['wall_per_simulated_s']:.3g}",
                  f"{r['us_per_link_step']:.3g}", f"{r['peak_rss_mb']:.0f}", r["failure"]] for r in rows])
    return rows


def main():
    parser = command_line(__doc__, "implicit3d")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--t-end", type=float, default=1.0)
    parser.add_argument("--reference", type=int, default=1000, help="chain of the dopri5 comparison (0: none)")
    parser.add_argument("--formulations", nargs="+", default=["recursive", "augmented"],
                        choices=["recursive", "augmented"], help="joint or absolute coordinates (or both)")
    parser.add_argument("--rho-inf", type=float, nargs="+", default=[0.9],
                        help="the numerical damping of the runs (each value a set of rows)")
    parser.add_argument("--tilts", type=float, nargs="+", default=[1e-3, 0.3], help="the initial tilts [rad]")
    parser.add_argument("--methods", nargs="+", default=["generalized_alpha"], choices=["generalized_alpha", "bdf"],
                        help="bdf: variable-step BDF in absolute coordinates (its own table, --rtols)")
    parser.add_argument("--rtols", type=float, nargs="+", default=[1e-4, 1e-6], help="bdf's rtol (= atol)")
    parser.add_argument("--no-projection", action="store_true",
                        help="absolute coordinates: generalized_alpha without its velocity projection (the plain "
                             "index-3 step, augmented3d_implicit.PROJECT_VELOCITIES off)")
    parser.add_argument("--projection-margin", type=float, default=None,
                        help="absolute coordinates: project a step's velocities where a joint row's gap exceeds this "
                             "many times the Newton tolerance's reach (augmented3d_implicit.PROJECTION_MARGIN; 0: at "
                             "every step)")
    args = parser.parse_args()
    if args.no_projection or args.projection_margin is not None:
        from recursive_mbd.integrate import augmented3d_implicit  # noqa: PLC0415

        augmented3d_implicit.PROJECT_VELOCITIES = not args.no_projection
        if args.projection_margin is not None:
            augmented3d_implicit.PROJECTION_MARGIN = args.projection_margin
    if "bdf" in args.methods:
        bdf_rows = bdf_main(args)
        if args.methods == ["bdf"]:
            path = write_json(args.name, {"bdf": bdf_rows})
            print(f"wrote {path}")
            return
    for formulation in args.formulations:
        implicit_row(5, 0.3, 2 * DT, formulation)  # compile
    cases = [(formulation, rho) for formulation in args.formulations for rho in args.rho_inf]
    rows = [implicit_row(n, tilt, args.t_end, formulation, rho) for formulation, rho in cases
            for tilt in args.tilts for n in args.sizes]
    print_table(["formulation", "rho_inf", "N", "tilt", "reached [s]", "wall/sim s", "us/link-step", "CPU us/link-step",
                 "iter/step", "fact/step", "splits", "projected", "peak RSS [MB]", "failure"],
                [[r["formulation"], r["rho_inf"], r["n"], r["tilt"], f"{r['reached']:.2f}",
                  f"{r['wall_per_simulated_s']:.3g}", f"{r['us_per_link_step']:.3g}",
                  f"{r['cpu_us_per_link_step']:.3g}", f"{r['iterations_per_step']:.2f}",
                  f"{r['factorizations_per_step']:.2f}", r["split_steps"],
                  "-" if r["velocity_projections"] is None else r["velocity_projections"], f"{r['peak_rss_mb']:.0f}",
                  r["failure"]] for r in rows])
    comparison = []
    references = {}
    if args.reference:
        for (formulation, rho), tilt in ((case, tilt) for case in cases for tilt in args.tilts):
            ours = next((r for r in rows if r["n"] == args.reference and r["tilt"] == tilt
                         and r["formulation"] == formulation and r["rho_inf"] == rho), None) or \
                implicit_row(args.reference, tilt, args.t_end, formulation, rho)
            model, q0, v0 = hanging_chain(args.reference, tilt)
            t_end = ours["reached"]
            if t_end < DT:  # generalized_alpha failed at its first step: nothing to compare
                continue
            if (tilt, t_end) not in references:  # one dopri5 run a case, shared by the formulations
                rm.simulate(model, q0, v0, 2 * DT, method="dopri5", rtol=1e-6, atol=1e-6)  # compile
                start = time.perf_counter()
                explicit = rm.simulate(model, q0, v0, t_end, method="dopri5", rtol=1e-6, atol=1e-6)
                references[tilt, t_end] = explicit, time.perf_counter() - start
            explicit, wall = references[tilt, t_end]
            comparison.append({"n": args.reference, "tilt": tilt, "formulation": formulation, "rho_inf": rho,
                               "t_end": t_end, "dopri5_wall_s": wall,
                               "generalized_alpha_wall_s": ours["wall_s"],
                               "speed_ratio": wall / ours["wall_s"],
                               "tip_difference_m": float(np.linalg.norm(np.array(ours["tip"])
                                                                        - tip(model, explicit.q[-1]))),
                               "dopri5_nfev": explicit.nfev})
        print_table(["formulation", "rho_inf", "N", "tilt", "t_end", "dopri5 [s]", "g-alpha [s]", "speed ratio",
                     "tip diff [m]"],
                    [[c["formulation"], c["rho_inf"], c["n"], c["tilt"], f"{c['t_end']:.2f}",
                      f"{c['dopri5_wall_s']:.3g}", f"{c['generalized_alpha_wall_s']:.3g}", f"{c['speed_ratio']:.3g}",
                      f"{c['tip_difference_m']:.2e}"] for c in comparison])
    path = write_json(args.name, {"dt": DT, "rows": rows, "dopri5": comparison,
                                  "bdf": bdf_rows if "bdf" in args.methods else []})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
