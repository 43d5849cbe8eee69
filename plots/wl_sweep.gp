# plots/wl_sweep.gp - a workload sweep (herd sweep: DDP, FSDP, ZeRO, TP,
# PP, any knob): predicted step time (solid) and exposed communication
# (dashed) against the swept value, one colour per series (the values of
# a second swept key: one line per value); the best run ringed in red,
# the runs within the tolerance of it (ties) circled in green below the
# dashed tolerance line, runs that do not fit the device's memory crossed
# in red (never recommended), failed runs (hang, error) as a black mark
# on the axis, the scenario's own value dotted.
# Not run by itself: herd writes NAME.gp = a preamble setting
#   data out ttl xlab logx cat nx tol best_x best_y best_text cur_x
#   have_unfit have_failed time_only mem_key nser ser[] and the x tics
# followed by this text (trace/plot_wl.c; columns of the .dat there).
set datafile separator "\t"
set datafile commentschars "#"
set title ttl noenhanced
set xlabel xlab noenhanced
set ylabel (time_only ? "time (ms)" : "time per step (ms)")
if (logx) { set logscale x 2; set offsets graph 0.04, graph 0.04, 0, 0 }
if (cat) { set xrange [-0.5:nx - 0.5] } else { if (!logx) { set offsets graph 0.04, graph 0.04, 0, 0 } }
set grid
set key below horizontal noenhanced
set yrange [0:*]
lim = best_y * (1 + tol / 100.)
if (best_y == best_y) { set label 1 sprintf("best: %s", best_text) at best_x, best_y point pt 6 ps 3.5 lw 2 lc rgb "red" right offset -1.5,1.5 noenhanced tc rgb "red" front }
if (cur_x == cur_x && nser == 1) {
    set arrow 1 from first cur_x, graph 0 to first cur_x, graph 1 nohead dt 3 lw 1.5 lc rgb "black"
    set label 2 "scenario's value" at first cur_x, graph 0.04 left offset 0.5,0 noenhanced
}
array C[8] = [0x1f77b4, 0x9467bd, 0x8c564b, 0xe377c2, 0x17becf, 0xbcbd22, 0x7f7f7f, 0x2ca02c]
scol(i) = nser == 1 ? 0x1f77b4 : C[(i - 1) % 8 + 1]
ecol(i) = nser == 1 ? 0xff7f0e : C[(i - 1) % 8 + 1]
stitle(i) = nser == 1 ? (time_only ? "time" : "step time") : sprintf("%s, %s", time_only ? "time" : "step time", ser[i])
etitle(i) = time_only ? "" : nser == 1 ? "exposed communication" : sprintf("exposed comm., %s", ser[i])

do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size 1100,700 noenhanced font ",11"; set output out.".png" }
    if (fmt eq "svg") { set terminal svg size 1100,700 noenhanced font ",11"; set output out.".svg" }
    plot for [i=1:nser] data index i-1 using 1:3 with linespoints pt 7 lw 2 lc rgb scol(i) title stitle(i), \
         for [i=1:nser] data index i-1 using 1:(time_only ? NaN : $4) with linespoints pt 5 dt 2 lw 2 lc rgb ecol(i) title etitle(i), \
         lim with lines dt 2 lw 1.5 lc rgb "#2ca02c" title sprintf("%g%% above the best", tol), \
         data using 1:($8 > 0 ? $3 : NaN) with points pt 6 ps 2.2 lw 2 lc rgb "#2ca02c" title sprintf("within %g%% of the best (ties)", tol), \
         data using 1:($6 > 0 && $7 == 0 ? $3 : NaN) with points pt 2 ps 2.5 lw 3 lc rgb "red" title (have_unfit ? sprintf("does not fit %s (not recommended)", mem_key) : ""), \
         data using 1:($6 == 0 ? 0 : NaN) with points pt 3 ps 2 lw 2 lc rgb "black" title (have_failed ? "failed (hang or error)" : ""), \
         data using 1:($10 > 0 && nser > 1 ? $3 : NaN) with points pt 4 ps 2.5 lw 1.5 lc rgb "black" title (nser > 1 && cur_x == cur_x ? "the scenario's value" : "")
    set output
}
