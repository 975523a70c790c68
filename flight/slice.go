package flight

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// sliceRanges splits the rows of rec into consecutive ranges [i, j) whose
// IPC body is at most target bytes each, except where one row alone is
// larger. Sizes count the value bytes a range needs, as an IPC writer sends
// them (it truncates the buffers of sliced arrays).
func sliceRanges(rec arrow.RecordBatch, target int64) [][2]int64 {
	n := rec.NumRows()
	if n == 0 {
		return nil
	}
	size := func(i, j int64) int64 {
		var b int64
		for _, c := range rec.Columns() {
			b += rangeBytes(c, i, j)
		}
		return b
	}
	var out [][2]int64
	for i := int64(0); i < n; {
		rest := size(i, n)
		j := n
		if rest > target {
			// Start from the remainder's average row size, then halve until it fits.
			j = i + max(1, (n-i)*target/rest)
			for j-i > 1 && size(i, j) > target {
				j = i + (j-i)/2
			}
		}
		out = append(out, [2]int64{i, j})
		i = j
	}
	return out
}

// rangeBytes is the number of buffer bytes rows [i, j) of a occupy: exact
// for primitive, boolean, binary, string, list, fixed-size list and struct
// arrays; for other types, the array's average per row.
func rangeBytes(a arrow.Array, i, j int64) int64 {
	rows := j - i
	if rows <= 0 {
		return 0
	}
	var b int64
	if a.NullN() > 0 {
		b += (rows + 7) / 8
	}
	switch arr := a.(type) {
	case array.BinaryLike:
		start := arr.ValueOffset64(int(i))
		end := arr.ValueOffset64(int(j-1)) + int64(arr.ValueLen(int(j-1)))
		return b + (end - start) + (rows+1)*offsetWidth(a.DataType())
	case array.ListLike:
		if _, view := a.(array.VarLenListLike); view && isListView(a.DataType()) {
			break // list views may share and reorder child ranges: use the average
		}
		// List, LargeList, Map and FixedSizeList: rows [i, j) use one
		// contiguous range of the child array.
		s, _ := arr.ValueOffsets(int(i))
		_, e := arr.ValueOffsets(int(j - 1))
		if isVarList(a.DataType()) {
			b += (rows + 1) * offsetWidth(a.DataType())
		}
		return b + rangeBytes(arr.ListValues(), s, e)
	case *array.Struct:
		for f := range arr.NumField() {
			b += rangeBytes(arr.Field(f), i, j)
		}
		return b
	}
	if fw, ok := a.DataType().(arrow.FixedWidthDataType); ok {
		bits := int64(fw.BitWidth())
		return b + (rows*bits+7)/8
	}
	// Anything else: the array's average per row.
	total := arrayBytes(a.Data())
	return b + total*rows/max(1, int64(a.Len()))
}

func isVarList(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.LIST, arrow.LARGE_LIST, arrow.MAP:
		return true
	}
	return false
}

func isListView(dt arrow.DataType) bool {
	return dt.ID() == arrow.LIST_VIEW || dt.ID() == arrow.LARGE_LIST_VIEW
}

func offsetWidth(dt arrow.DataType) int64 {
	switch dt.ID() {
	case arrow.LARGE_BINARY, arrow.LARGE_STRING, arrow.LARGE_LIST:
		return 8
	}
	return 4
}

func arrayBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		n += arrayBytes(c)
	}
	return n
}
