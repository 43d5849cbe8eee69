# plots/wl_memory.gp - peak memory per rank of sharded runs (FSDP
# strategies, ZeRO stages, parallel layouts): one stacked bar per run
# (parameters, gradients, optimizer state, unsharded or ZeRO-3 gathered
# parameters, activations), the device's memory as a red line when the
# scenario gives one, runs over it labelled "does not fit", the best
# "best", and the step time on the right axis.
# Not run by itself: herd writes NAME.gp = a preamble setting
#   data out ttl xlab note unit lim nbars have_step nparts pcol[] pname[]
#   and the x tics
# followed by this text (trace/plot_wl.c; columns of the .dat there).
# (The labels of bars without one sit at y = -1, out of range: a labels
# plot whose points are all NaN crashes gnuplot 5.4.4.)
set datafile separator "\t"
set datafile commentschars "#"
set title (strlen(note) > 0 ? ttl."\n".note : ttl) noenhanced
set xlabel xlab noenhanced
set ylabel sprintf("peak memory per rank (%s)", unit)
set style fill solid 0.85 border -1
set boxwidth 0.6
set grid ytics
set key below horizontal noenhanced
set xrange [-0.6:nbars - 0.4]
# the device's memory stays in view over bars far below it
set yrange [0:(lim > 0 ? lim * 1.08 : 0) < *]
set ytics nomirror
if (nbars > 6) { set xtics rotate by -30 }
# no step time (a run that hung): a fixed y2 range, as gnuplot refuses to
# autoscale an axis whose points are all undefined
if (have_step) { set y2label "step time (ms)"; set y2range [0:*]; set y2tics } else { set y2range [0:1] }
if (lim > 0) { set arrow 1 from graph 0, first lim to graph 1, first lim nohead dt 2 lw 2 lc rgb "red" front; set label 1 sprintf("device memory %g %s", lim, unit) at graph 0.99, first lim right offset 0,0.7 textcolor rgb "red" front }
array C[5] = [0x1f77b4, 0xff7f0e, 0x2ca02c, 0x9467bd, 0x8c564b]
# a part's bar reaches the sum of it and the parts below it
top(k) = sum [j=1:k] column(pcol[j])

do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size 1100,700 noenhanced font ",11"; set output out.".png" }
    if (fmt eq "svg") { set terminal svg size 1100,700 noenhanced font ",11"; set output out.".svg" }
    plot for [k=nparts:1:-1] data using 1:(top(k)) with boxes lc rgb C[pcol[k] - 2] title pname[k], \
         data using 1:($10 == 0 ? $8 : -1):($10 == 0 ? "does not fit" : "") with labels offset 0,1 tc rgb "red" notitle, \
         data using 1:($11 > 0 ? $8 : -1):($11 > 0 ? "best" : "") with labels offset 0,1 tc rgb "black" notitle, \
         data using 1:(have_step ? $9 : NaN) axes x1y2 with points pt 7 ps 1.5 lc rgb "black" title (have_step ? "step time" : "")
    set output
}
