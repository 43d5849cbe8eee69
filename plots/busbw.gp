# plots/busbw.gp - bus bandwidth against message size, one line per
# algorithm, from the sweep TSV `herd sim` writes (sweep.tsv).
# usage: gnuplot -c busbw.gp SWEEP.tsv OUT_PREFIX "TITLE"
# writes OUT_PREFIX.png and OUT_PREFIX.svg
if (ARGC < 2) { print "usage: gnuplot -c busbw.gp SWEEP.tsv OUT_PREFIX [TITLE]"; exit status 2 }
data = ARG1
out = ARG2
ttl = (ARGC >= 3) ? ARG3 : "bus bandwidth"

set datafile separator "\t"
stats data using 2 nooutput
nblocks = STATS_blocks
# pad the range: a tick exactly on the autoscaled edge can be dropped
# (the largest size lost its label), and end points sit on the border
xlo = STATS_min / 1.25
xhi = STATS_max * 1.25

set title ttl noenhanced
set xlabel "message size (bytes)"
set ylabel "bus bandwidth (GB/s)"
set logscale x 2
set xrange [xlo:xhi]
# tick labels at the measured sizes, in binary units
sz(b) = b >= 2**30 ? sprintf("%gGiB", b / 2.**30) : \
        b >= 2**20 ? sprintf("%gMiB", b / 2.**20) : \
        b >= 2**10 ? sprintf("%gKiB", b / 2.**10) : sprintf("%gB", b)
set xtics rotate by -45
set rmargin 8
set bmargin 5
set grid
set key top left noenhanced

do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size 1000,650 noenhanced font ",11"; set output out.".png" }
    if (fmt eq "svg") { set terminal svg size 1000,650 noenhanced font ",11"; set output out.".svg" }
    plot for [i=0:nblocks-1] data index i using 2:5:xtic(sz($2)) with linespoints pt 7 ps 0.8 lw 2 title columnheader(1)
    set output
}
