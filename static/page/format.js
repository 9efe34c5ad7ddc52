// How the page writes durations, sizes and Python errors.

// 999.6 ms rounds to "1.0 s", not "1000 ms"
export const ms = (x) => (Math.round(x) >= 1000 ? (x / 1000).toFixed(1) + " s" : Math.round(x) + " ms");

export const bytes = (n) => (n < 1024 ? n + " B" : n < 1 << 20 ? (n / 1024).toFixed(1) + " KiB" : (n / (1 << 20)).toFixed(1) + " MiB");

// The last line of a Python traceback is the exception and its message; the whole traceback goes to the console.
export const lastLine = (text) => text.trim().split("\n").pop();
