# plots/wl_step.gp - the Gantt chart of one training step: for each rank
# drawn, a row per stream (compute, data loading, all_gather,
# reduce_scatter, all_reduce, send, recv, ...; a kind with ops in flight
# together has numbered rows, so no row holds two bars at once), time in
# ms from the step's start, and in red on the compute row the time the
# compute stream sat idle while communication was in flight (exposed
# communication).
# Not run by itself: herd writes NAME.gp = a preamble setting
#   data out ttl sub nrows nranks step_ms nst sn[] sc[] and the y tics
# followed by this text (trace/plot_step.c; columns of the .dat there).
set datafile separator "\t"
set datafile commentschars "#"
set title (strlen(sub) > 0 ? ttl."\n".sub : ttl) noenhanced
set xlabel "time from the step's start (ms)"
set yrange [nrows - 0.5:-0.5]
set xrange [0:step_ms]
set ytics nomirror
set grid xtics
set key outside right top noenhanced
set style fill solid 0.9 noborder
h(s) = s == nst - 1 ? 0.3 : 0.36

do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size 1400,(300 + 22 * nrows) noenhanced font ",10"; set output out.".png" }
    if (fmt eq "svg") { set terminal svg size 1400,(300 + 22 * nrows) noenhanced font ",10"; set output out.".svg" }
    plot data using (($2 + $3) / 2):1:(($3 - $2) / 2):(h($4)):(sc[int($4) + 1]) with boxxyerror lc rgb variable notitle, \
         for [k=1:nst] NaN with boxes lc rgb sc[k] title sn[k]
    set output
}
