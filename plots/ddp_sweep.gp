# plots/ddp_sweep.gp - a DDP sweep (e.g. bucket_cap_mb): predicted step
# time and exposed communication against the swept value; the best value,
# the band within TOLERANCE percent of it (ties: each value in it is
# circled) and the scenario's own value are marked. Input TSV (header
# line first): value, step_ms, exposed_ms, ...; ticks at the swept values.
# usage: gnuplot -c ddp_sweep.gp SWEEP.tsv OUT_PREFIX TITLE PARAMETER
#        BEST_X BEST_Y [TOLERANCE [CURRENT_X|- [log|lin]]]
# writes OUT_PREFIX.png and OUT_PREFIX.svg
if (ARGC < 6) { print "usage: gnuplot -c ddp_sweep.gp SWEEP.tsv OUT_PREFIX TITLE PARAMETER BEST_X BEST_Y [TOLERANCE [CURRENT_X|- [log|lin]]]"; exit status 2 }
data = ARG1
out = ARG2
bx = real(ARG5)
by = real(ARG6)
tol = (ARGC >= 7) ? real(ARG7) : 0
lim = by * (1 + tol / 100.)
have_cur = (ARGC >= 8 && ARG8 ne "-")
cx = have_cur ? real(ARG8) : 0

set datafile separator "\t"
set title ARG3 noenhanced
set xlabel ARG4 noenhanced
set ylabel "time per step (ms)"
if (ARGC >= 9 && ARG9 eq "log") { set logscale x 2 }
set grid
set key below horizontal noenhanced
set yrange [0:*]
set label 1 sprintf("best: %g", bx) at bx, by point pt 6 ps 3 lc rgb "red" right offset -1.5,1.5 noenhanced
if (have_cur) {
    set arrow 1 from first cx, graph 0 to first cx, graph 1 nohead dt 3 lw 1.5 lc rgb "black"
    set label 2 sprintf("scenario's value: %g", cx) at first cx, graph 0.04 left offset 0.5,0 noenhanced
}
band = sprintf("within %g%% of the best", tol)

do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size 1000,650 noenhanced font ",11"; set output out.".png" }
    if (fmt eq "svg") { set terminal svg size 1000,650 noenhanced font ",11"; set output out.".svg" }
    plot data skip 1 using 1:2:xtic(sprintf("%g", $1)) with linespoints pt 7 lw 2 lc rgb "#1f77b4" title "step time", \
         data skip 1 using 1:3 with linespoints pt 5 lw 2 lc rgb "#ff7f0e" title "exposed communication", \
         lim with lines dt 2 lw 1.5 lc rgb "#2ca02c" title sprintf("%g%% above the best", tol), \
         data skip 1 using 1:($2 <= lim ? $2 : NaN) with points pt 6 ps 2.2 lw 2 lc rgb "#2ca02c" title band
    set output
}
