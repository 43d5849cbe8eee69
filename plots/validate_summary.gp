# plots/validate_summary.gp - herd validate --rates: every row's predicted
# against measured time over all link rates (log-log), with the y = x line
# and the +-10 % band around it; one colour per rate. Input: points.tsv
# (one block per rate, blank lines between, a title line first; columns
# rate, predicted_ms, measured_ms, ...).
# usage: gnuplot -c validate_summary.gp POINTS.tsv OUT_PREFIX "TITLE"
# writes OUT_PREFIX.png and OUT_PREFIX.svg
if (ARGC < 2) { print "usage: gnuplot -c validate_summary.gp POINTS.tsv OUT_PREFIX [TITLE]"; exit status 2 }
data = ARG1
out = ARG2
ttl = (ARGC >= 3) ? ARG3 : "predicted vs measured"

set datafile separator "\t"
stats data using 2 nooutput
nblocks = STATS_blocks
stats data using 2:3 nooutput
lo = (STATS_min_x < STATS_min_y ? STATS_min_x : STATS_min_y) / 2
hi = (STATS_max_x > STATS_max_y ? STATS_max_x : STATS_max_y) * 2
if (lo <= 0) { lo = 0.001 }
set xrange [lo:hi]
set yrange [lo:hi]

set title ttl noenhanced
set xlabel "measured (ms)"
set ylabel "predicted (ms)"
set logscale xy 10
set grid
set key top left noenhanced
set size ratio -1
set style fill transparent solid 0.35 noborder

do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size 900,850 noenhanced font ",11"; set output out.".png" }
    if (fmt eq "svg") { set terminal svg size 900,850 noenhanced font ",11"; set output out.".svg" }
    plot '+' using 1:(0.9*$1):(1.1*$1) with filledcurves lc rgb "#a0a0a0" title "+-10 %", \
         for [i=0:nblocks-1] data index i using 3:2 with points pt 7 ps 0.8 title columnheader(1), \
         x with lines lc rgb "black" dt 2 title "y = x"
    set output
}
