import Foundation
import Testing

@testable import HaulCommands

/// Numbers in progress lines as `String(format:)` wrote them (haul's binary has no Foundation).
@Suite(.timeLimit(.minutes(1))) struct NumberTextTests {
    @Test(arguments: [0, 1, 2])
    func fixedIsPrintfsFormat(places: Int) {
        var values: [Double] = [0, -0.0, 0.05, 0.15, 0.25, 0.35, 0.45, 1.5, 2.5, 9.95, 99.95, 99.999, 100, 1023.96]
        values += [-1.25, -0.04, 1e6 + 0.5, 12_345.678, Double(Int32.max) + 0.75]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 { values.append(Double.random(in: -10_000...10_000, using: &generator)) }
        for value in values {
            for width in [0, 3, 5, 9] {
                let printf = String(format: "%\(width == 0 ? "" : String(width)).\(places)f", value)
                #expect(NumberText.fixed(value, places: places, width: width) == printf, "\(value) width \(width)")
            }
        }
    }

    @Test func zeroPaddedIsPrintfsFormat() {
        for value in [0, 5, 9, 10, 59, 123, -7, -42] as [Int64] {
            #expect(NumberText.zeroPadded(value, width: 2) == String(format: "%02lld", value))
        }
    }

}
