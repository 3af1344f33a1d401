// Package textsafe makes text that a container (or anyone who can write to the shared
// directory) wrote safe to show: on a terminal, where control characters would act
// (ESC sequences that set the title, move the cursor or hide text, OSC 8 links, bidi
// overrides that reorder what is shown), and in a spreadsheet, where a cell that starts
// with =, +, -, @, a tab or a carriage return is taken for a formula. It is the one place
// these rules live; every printer and every CSV writer uses it.
package textsafe
