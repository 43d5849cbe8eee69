# plots/ddp_sweep.gp - a DDP sweep (e.g. bucket_cap_mb): predicted step
# time and exposed communication against the swept value, best value
# marked. Input TSV (header line first): value, step_ms, exposed_ms, ...
# usage: gnuplot -c ddp_sweep.gp SWEEP.tsv OUT_PREFIX TITLE PARAMETER
#        BEST_X BEST_Y [log]       writes OUT_PREFIX.png and OUT_PREFIX.svg
if (ARGC < 6) { print "usage: gnuplot -c ddp_sweep.gp SWEEP.tsv OUT_PREFIX TITLE PARAMETER BEST_X BEST_Y [log]"; exit status 2 }
data = ARG1
out = ARG2
bx = real(ARG5)
by = real(ARG6)

set datafile separator "\t"
set title ARG3 noenhanced
set xlabel ARG4 noenhanced
set ylabel "time per step (ms)"
if (ARGC >= 7 && ARG7 eq "log") { set logscale x 2 }
set grid
set key top center noenhanced
set yrange [0:*]
set label 1 sprintf("best: %g", bx) at bx, by point pt 6 ps 3 lc rgb "red" right offset -1.5,1.5 noenhanced

do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size 1000,650 noenhanced font ",11"; set output out.".png" }
    if (fmt eq "svg") { set terminal svg size 1000,650 noenhanced font ",11"; set output out.".svg" }
    plot data skip 1 using 1:2 with linespoints pt 7 lw 2 title "step time", \
         data skip 1 using 1:3 with linespoints pt 5 lw 2 title "exposed communication"
    set output
}
